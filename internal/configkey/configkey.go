// Package configkey names the lab stack's Pulumi config keys, in one place for the Pulumi
// program that reads them and the runner that sets them. The program reads them without the
// project's namespace (config.New(ctx, Project).Get(Knobs)); the runner and Pulumi's files
// write them with it (Full(Knobs) is "igwlab:knobs").
package configkey

// Project is the Pulumi project, the namespace of every key.
const Project = "igwlab"

// The keys the runner sets or reads too.
const (
	Scenario             = "scenario"
	Knobs                = "knobs"
	JWTKey               = "jwtKey"
	JWKS                 = "jwks"
	GatewayDrainDuration = "gatewayDrainDuration"
	ProxyConcurrency     = "proxyConcurrency"
	// GatewayCPULimit and GatewayCPURequest are the gateway container's CPU limit and
	// request (Kubernetes quantities; default: proxyConcurrency cores each).
	GatewayCPULimit   = "gatewayCpuLimit"
	GatewayCPURequest = "gatewayCpuRequest"
	Kubeconfig        = "kubeconfig"
	KubeContext       = "kubeContext"
)

// The program's other keys.
const (
	APIPort           = "apiPort"
	BuildImages       = "buildImages"
	Cluster           = "cluster"
	ClusterName       = "clusterName"
	FortioImage       = "fortioImage"
	GatewayAPIVersion = "gatewayApiVersion"
	GatewayReplicas   = "gatewayReplicas"
	// GatewayServiceType is the gateway Service's type: LoadBalancer on k3d (bound to
	// 127.0.0.1 by k3d), ClusterIP elsewhere unless the stack exposes it deliberately.
	GatewayServiceType = "gatewayServiceType"
	// InstallGatewayAPICRDs applies the Gateway API CRDs (false: the cluster's own, as GKE
	// and AKS manage them).
	InstallGatewayAPICRDs = "installGatewayApiCrds"
	// GatewayRestartedAt, GatewayMaxSurge, GatewayMaxUnavailable and GatewayPush are the
	// pool changes of a scenario's events (a rolling restart, its strategy, a config push),
	// which the runner sets before a pulumi up (infra/rollout.go).
	GatewayRestartedAt         = "gatewayRestartedAt"
	GatewayMaxSurge            = "gatewayMaxSurge"
	GatewayMaxUnavailable      = "gatewayMaxUnavailable"
	GatewayPush                = "gatewayPush"
	GrafanaPassword            = "grafanaPassword"
	H2dialImage                = "h2dialImage"
	HostPort                   = "hostPort"
	HTTPBinImage               = "httpbinImage"
	InstallUpstream            = "installUpstream"
	IstioVersion               = "istioVersion"
	K3sImage                   = "k3sImage"
	KubePrometheusStackVersion = "kubePrometheusStackVersion"
	Monitoring                 = "monitoring"
	Platform                   = "platform"
	Profile                    = "profile"
	RenderAllScenarios         = "renderAllScenarios"
	RenderDir                  = "renderDir"
	SkipAwait                  = "skipAwait"
	UpstreamDir                = "upstreamDir"
	WaypointReplicas           = "waypointReplicas"
	// Verify runs the program's after-update checks (on unless "false").
	Verify = "verify"
	// VerifyTimeout bounds each check (default: the gateway's drain time plus a margin).
	VerifyTimeout = "verifyTimeout"
	// GatewayAdmins are Envoy admin base URLs the checks read instead of port-forwarding
	// to the gateway pods through the Kubernetes API.
	GatewayAdmins = "gatewayAdmins"
	// PrometheusURL is Prometheus's base URL for the monitoring checks, instead of
	// port-forwarding to its pod.
	PrometheusURL = "prometheusUrl"
	// GatewayURL is the gateway's base URL the waypoint check sends its requests to, instead
	// of the k3d host port (or a port-forward to a gateway pod on an existing cluster).
	GatewayURL = "gatewayUrl"
	// WaypointAdmins are the waypoint pods' Envoy admin base URLs the waypoint check reads
	// instead of port-forwarding to them.
	WaypointAdmins = "waypointAdmins"
)

// All lists every key the program reads, sorted: any other igwlab: key is
// refused, so that a misspelt one is not ignored.
var All = []string{
	APIPort, BuildImages, Cluster, ClusterName, FortioImage, GatewayAdmins, GatewayAPIVersion, GatewayURL,
	GatewayCPULimit, GatewayCPURequest, GatewayDrainDuration, GatewayMaxSurge, GatewayMaxUnavailable, GatewayPush, GatewayReplicas, GatewayRestartedAt, GatewayServiceType, GrafanaPassword,
	H2dialImage, HostPort, HTTPBinImage, InstallGatewayAPICRDs, InstallUpstream, IstioVersion, JWKS, JWTKey, K3sImage,
	Knobs, KubeContext, KubePrometheusStackVersion, Kubeconfig, Monitoring, Platform, Profile, PrometheusURL, ProxyConcurrency,
	RenderAllScenarios, RenderDir, Scenario, SkipAwait, UpstreamDir, Verify, VerifyTimeout,
	WaypointAdmins, WaypointReplicas,
}

// Retired are keys the lab no longer reads, and what replaced them: a stack that still sets
// one is told so rather than that the key is unknown.
var Retired = map[string]string{
	"ghzImage":     "the gRPC client is the lab's own, in the h2dial image (igwlab:h2dialImage): ghz publishes amd64 images only",
	"grpcbinImage": "the gRPC backend is the lab's own, in the h2dial image (igwlab:h2dialImage): moul/grpcbin publishes amd64 images only",
}

// Full is a key with the project's namespace, as `pulumi config` and Pulumi.<stack>.yaml spell it.
func Full(key string) string { return Project + ":" + key }
