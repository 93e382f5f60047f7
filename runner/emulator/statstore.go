package emulator

import "github.com/igwlab/igwlab/runner/model"

// The pods' statistics are the model's (runner/model/stats.go): one naming for the socket
// emulator's pods and the simulator's.
type (
	StatKind = model.StatKind
	Label    = model.Label
	Stat     = model.Stat
	Store    = model.Store
)

// Stat kinds.
const (
	Counter = model.Counter
	Gauge   = model.Gauge
	Hist    = model.Hist
)

// NewStore returns an empty store.
func NewStore() *Store { return model.NewStore() }

// PromName is the Prometheus metric name Istio's Envoy gives a tag-extracted stat name.
func PromName(tagged string) string { return model.PromName(tagged) }

var (
	hcmStat      = model.HCMStat
	listenerStat = model.ListenerStat
	workerStat   = model.WorkerStat
	clusterStat  = model.ClusterStat
	plainStat    = model.PlainStat
	emulatorStat = model.LabStat
)
