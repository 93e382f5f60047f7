package emulator

// kernelHashesReusePort: Linux spreads connections over SO_REUSEPORT sockets by a hash of the
// 4-tuple, so the socket a connection arrives on is the worker it belongs to.
const kernelHashesReusePort = true
