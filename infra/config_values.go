package infra

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/igwlab/igwlab/internal/configkey"
)

// The gateway's drain time: Istio requires at least 1 s in whole seconds (its ProxyConfig
// validation, and Envoy's --drain-time-s is an integer); past 10 minutes every scenario switch
// would wait that long.
const (
	minDrain     = time.Second
	maxDrain     = 10 * time.Minute
	drainAllowed = "whole seconds from 1s to 10m0s, such as 5s (Istio's default is 45s)"
)

// ParseDrainDuration reads igwlab:gatewayDrainDuration: a duration such as 5s or 1m.
func ParseDrainDuration(raw string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(raw))
	if err != nil || !drainOK(d) {
		return 0, &ConfigError{configkey.GatewayDrainDuration, raw, drainAllowed}
	}
	return d, nil
}

// DurationText writes whole seconds the way protobuf's JSON form of a Duration needs them
// ("45s"; Go's "1m0s" would not parse as Istio's ProxyConfig).
func DurationText(d time.Duration) string { return fmt.Sprintf("%ds", int64(d/time.Second)) }

func drainOK(d time.Duration) bool { return d >= minDrain && d <= maxDrain && d%time.Second == 0 }

// imageRef is an image reference with a tag or a digest: [registry[:port]/]path[:tag][@sha256:hex].
var imageRef = regexp.MustCompile(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?(?::[0-9]{1,5})?/)?` +
	`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*` +
	`(?::([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?(@sha256:[0-9a-f]{64})?$`)

const h2dialImageAllowed = "an image reference the cluster can pull, with a tag or digest other than latest, " +
	"such as registry.example.com/igwlab/h2dial:v1 (pulled IfNotPresent: a moved tag would not be pulled again)"

// checkH2dialImage validates igwlab:h2dialImage and requires it wherever the lab cannot build
// the image itself: the build imports into k3d only, and without an image of its own the h2dial
// pod would wait for an image that never comes (ErrImageNeverPull).
func (c Config) checkH2dialImage() []error {
	img := c.Images.H2dialPushed
	if img != "" {
		m := imageRef.FindStringSubmatch(img)
		if m == nil || (m[1] == "" && m[2] == "") || m[1] == "latest" {
			return []error{&ConfigError{configkey.H2dialImage, img, h2dialImageAllowed}}
		}
		return nil
	}
	if c.RenderDir != "" || c.SkipAwait || (c.Cluster == ClusterK3d && c.BuildImages) {
		return nil
	}
	why := "required with igwlab:cluster existing (the lab builds h2dial into k3d only)"
	if c.Cluster == ClusterK3d {
		why = "required with igwlab:buildImages false (nothing else puts h2dial on the nodes)"
	}
	return []error{&ConfigError{configkey.H2dialImage, "", fmt.Sprintf("%s; %s: build it for the nodes' architectures and push it with make image IMAGE=REGISTRY/igwlab/h2dial:TAG (docker buildx build --platform linux/amd64,linux/arm64 -f %s --push)",
		h2dialImageAllowed, why, H2dialDockerfile)}}
}

const verifyTimeoutAllowed = "a duration from 1s to 30m, such as 90s"

// DrainMargin is what the wait after a scenario switch allows beyond the gateway's drain time:
// the xDS push reaching every pod after the EnvoyFilter is applied, and the polls.
const DrainMargin = 30 * time.Second

// CheckTimeout bounds each after-update check: igwlab:verifyTimeout, else the drain time plus
// DrainMargin (Envoy keeps a replaced listener exactly its drain time).
func (c Config) CheckTimeout() time.Duration {
	if c.VerifyTimeout > 0 {
		return c.VerifyTimeout
	}
	return c.GatewayDrainDuration + DrainMargin
}

// HostGatewayURL is the gateway as the host reaches it on a k3d lab: the load balancer's port
// k3d maps to 127.0.0.1 (igwlab:hostPort).
func (c Config) HostGatewayURL() string { return fmt.Sprintf("http://127.0.0.1:%d", c.HostPort) }
