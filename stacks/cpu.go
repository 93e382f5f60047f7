package stacks

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// CPU is a CPU quantity in millicores, written as Kubernetes writes one: "2", "1500m", "0.5"
// (k8s.io/apimachinery resource.Quantity, the decimal SI forms a CPU takes). The kubelet turns
// a container's limit into its CFS quota, limit x 100 ms per 100 ms period
// (pkg/kubelet/cm/helpers_linux.go MilliCPUToQuota), and Istio's gateway injection passes the
// limit, rounded up to whole cores, to pilot-agent as ISTIO_CPU_LIMIT, the worker count when
// no concurrency is set (pilot/cmd/pilot-agent/config/config.go ConstructProxyConfig).
type CPU int64

// The CPU quantities the lab takes: a tenth of a core to 64 cores.
const (
	MinCPU CPU = 100
	MaxCPU CPU = 64000
)

// ParseCPU reads "2", "1500m" or "0.5".
func ParseCPU(s string) (CPU, error) {
	s = strings.TrimSpace(s)
	bad := fmt.Errorf("%q is not a CPU quantity (cores such as 2 or 0.5, or millicores such as 1500m)", s)
	if m, ok := strings.CutSuffix(s, "m"); ok {
		n, err := strconv.ParseInt(m, 10, 64)
		if err != nil || n < 0 || strconv.FormatInt(n, 10) != m {
			return 0, bad
		}
		return CPU(n), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || strings.ContainsAny(s, "eE+xX_") {
		return 0, bad
	}
	mc := f * 1000
	if mc != math.Trunc(mc) || mc > 1e15 {
		return 0, fmt.Errorf("%q: a CPU quantity is whole millicores (write 1500m or 1.5)", s)
	}
	return CPU(mc), nil
}

// String writes the quantity as Kubernetes canonicalises it: whole cores as a number, the rest
// in millicores.
func (c CPU) String() string {
	if c%1000 == 0 {
		return strconv.FormatInt(int64(c)/1000, 10)
	}
	return strconv.FormatInt(int64(c), 10) + "m"
}

// Cores is the quantity in cores.
func (c CPU) Cores() float64 { return float64(c) / 1000 }

// Check says what is wrong with a quantity for field, or nil: 0 (unset) or MinCPU..MaxCPU.
func (c CPU) Check() error {
	if c != 0 && (c < MinCPU || c > MaxCPU) {
		return fmt.Errorf("%s is out of range (allowed %s..%s cores)", c, MinCPU, MaxCPU)
	}
	return nil
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (c *CPU) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseCPU(n.Value)
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// MarshalYAML implements yaml.Marshaler.
func (c CPU) MarshalYAML() (any, error) { return c.String(), nil }

// MarshalText renders the quantity for JSON output.
func (c CPU) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText parses the quantity from JSON input.
func (c *CPU) UnmarshalText(b []byte) error {
	v, err := ParseCPU(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}
