package infra

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/igwlab/igwlab/internal/configkey"
	"github.com/igwlab/igwlab/stacks"
)

// The pool changes a scenario's events make on the real lab (stacks.Event), as stack config
// the runner sets before each `pulumi up`, so that `pulumi preview --diff` shows a change
// before it is applied:
//   - scale: igwlab:gatewayReplicas, the chart's replicaCount (its HPA stays off);
//   - rolling restart: igwlab:gatewayRestartedAt, the pod-template annotation
//     kubectl.kubernetes.io/restartedAt that `kubectl rollout restart` sets
//     (k8s.io/kubectl pkg/polymorphichelpers/objectrestarter.go, an RFC 3339 time), through
//     the chart's podAnnotations, with igwlab:gatewayMaxSurge and igwlab:gatewayMaxUnavailable
//     as the Deployment's RollingUpdate strategy (the chart's strategy value);
//   - config push: igwlab:gatewayPush, the generation the scenario's EnvoyFilter carries
//     (envoyfilter.WithPush).

// RestartedAtAnnotation is the pod-template annotation of a rolling restart.
const RestartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"

// MaxPush is the highest push generation.
const MaxPush = 1_000_000

// Rollout is the pool's restart and push state in the stack.
type Rollout struct {
	// RestartedAt is the last restart's time (zero: never restarted by the lab).
	RestartedAt time.Time
	// MaxSurge and MaxUnavailable are the Deployment's RollingUpdate values, a count or a
	// percentage ("" leaves Kubernetes' 25%).
	MaxSurge, MaxUnavailable string
	// Push is the config push generation (0: none).
	Push int
}

// readRollout reads the rollout keys; get is the stack config's Get.
func readRollout(get func(string) string) (Rollout, []error) {
	var r Rollout
	var errs []error
	if raw := get(configkey.GatewayRestartedAt); raw != "" {
		t, err := time.Parse(time.RFC3339, strings.TrimSpace(raw))
		if err != nil {
			errs = append(errs, &ConfigError{configkey.GatewayRestartedAt, raw, "an RFC 3339 time such as 2026-12-02T10:00:00Z (what kubectl rollout restart writes)"})
		}
		r.RestartedAt = t
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{configkey.GatewayMaxSurge, &r.MaxSurge}, {configkey.GatewayMaxUnavailable, &r.MaxUnavailable}} {
		raw := strings.TrimSpace(get(f.key))
		if raw == "" {
			continue
		}
		if err := stacks.CheckRollingValue(raw); err != nil {
			errs = append(errs, &ConfigError{f.key, raw, "a count 0..1000 or a percentage 0%..100%, as a Deployment's RollingUpdate takes"})
			continue
		}
		*f.dst = raw
	}
	if r.MaxSurge != "" && r.MaxUnavailable != "" && zeroRolling(r.MaxSurge) && zeroRolling(r.MaxUnavailable) {
		errs = append(errs, &ConfigError{configkey.GatewayMaxUnavailable, r.MaxUnavailable, "more than 0 when igwlab:gatewayMaxSurge is 0 (the Deployment API refuses both 0)"})
	}
	if raw := get(configkey.GatewayPush); raw != "" {
		n, err := strconv.Atoi(strings.TrimSpace(raw))
		if err != nil || n < 0 || n > MaxPush {
			errs = append(errs, &ConfigError{configkey.GatewayPush, raw, fmt.Sprintf("a whole number 0..%d (the config push generation)", MaxPush)})
		}
		r.Push = n
	}
	return r, errs
}

func zeroRolling(v string) bool { return strings.TrimSuffix(v, "%") == "0" }

// chartValues adds the rollout's pod annotation and strategy to the gateway chart's values.
func (r Rollout) chartValues(values pulumi.Map, annotations pulumi.Map) {
	if !r.RestartedAt.IsZero() {
		annotations[RestartedAtAnnotation] = pulumi.String(r.restartedText())
	}
	ru := pulumi.Map{}
	for k, v := range map[string]string{"maxSurge": r.MaxSurge, "maxUnavailable": r.MaxUnavailable} {
		switch n, err := strconv.Atoi(v); {
		case v == "":
		case err == nil:
			ru[k] = pulumi.Int(n) // an IntOrString: a count is a number, a percentage a string
		default:
			ru[k] = pulumi.String(v)
		}
	}
	if len(ru) > 0 {
		values["strategy"] = pulumi.Map{"type": pulumi.String("RollingUpdate"), "rollingUpdate": ru}
	}
}

// restartedText is the restart's time as the annotation spells it, or "".
func (r Rollout) restartedText() string {
	if r.RestartedAt.IsZero() {
		return ""
	}
	return r.RestartedAt.UTC().Format(time.RFC3339)
}

// RolloutMargin is what the gateway check allows beyond its default timeout after a
// restart when the release is not awaited (igwlab:skipAwait): the rollout itself then runs
// after pulumi up has moved on, a few readiness periods (15 s each) per surge of new pods.
// An igwlab:verifyTimeout the user set is taken as it is.
const RolloutMargin = time.Minute

// rolloutTimeout bounds the gateway check.
func (c *Checks) rolloutTimeout() time.Duration {
	if c.cfg.Rollout.RestartedAt.IsZero() || !c.cfg.SkipAwait || c.cfg.VerifyTimeout > 0 {
		return c.timeout
	}
	return c.timeout + RolloutMargin
}
