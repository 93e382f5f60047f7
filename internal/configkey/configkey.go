// Package configkey names the lab stack's Pulumi config keys, in one place for the Pulumi
// program that reads them and the runner that sets them. The program reads them without the
// project's namespace (config.New(ctx, Project).Get(Knobs)); the runner and Pulumi's files
// write them with it (Full(Knobs) is "igwlab:knobs").
package configkey

// Project is the Pulumi project, the namespace of every key.
const Project = "igwlab"

// The keys the runner sets or reads besides the program.
const (
	Scenario             = "scenario"
	Knobs                = "knobs"
	JWTKey               = "jwtKey"
	JWKS                 = "jwks"
	GatewayDrainDuration = "gatewayDrainDuration"
	ProxyConcurrency     = "proxyConcurrency"
	GHZImage             = "ghzImage"
	Kubeconfig           = "kubeconfig"
	KubeContext          = "kubeContext"
)

// Full is a key with the project's namespace, as `pulumi config` and Pulumi.<stack>.yaml spell it.
func Full(key string) string { return Project + ":" + key }
