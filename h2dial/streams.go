package h2dial

// ConnUse is one connection a client of long-lived streams opened, in seconds from the
// window's start, and the streams it carried: what tells a rotation that drained the
// connection from one that moved its streams (analysis reads the streams' seconds on
// connections past the gateway's rotation limit).
type ConnUse struct {
	Local   string  `json:"local"`
	OpenedS float64 `json:"opened_s"`
	Streams []Span  `json:"streams,omitempty"`
}

// Span is one stream's life on a connection. A stream still open when the window ended has
// Open set, and EndS the window's end.
type Span struct {
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	Open   bool    `json:"open_at_end,omitempty"`
}
