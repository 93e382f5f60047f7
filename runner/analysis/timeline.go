package analysis

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"
)

// Sample is one reading of every gateway pod during the window (about once a second), from
// the stats a real gateway exposes: downstream_rq_total, downstream_cx_active and _total,
// ssl.handshake and the workers' busy time, as rates over the interval since the last one.
type Sample struct {
	Elapsed time.Duration        `json:"elapsed"`
	Pods    map[string]PodSample `json:"pods"`
}

// PodSample is one pod's rates in a sample.
type PodSample struct {
	RPS        float64 `json:"rps"`
	CxActive   float64 `json:"cx_active"`
	NewCx      float64 `json:"new_cx"`     // connections opened in the interval
	Handshakes float64 `json:"handshakes"` // TLS handshakes in the interval
	BusyMax    float64 `json:"busy_max"`   // the busiest worker's share of the interval
	CPU        float64 `json:"cpu"`        // cores used: the workers' busy time over the interval
	Workers    int     `json:"workers"`
}

// Mark is a step of a scenario's own event on the window's clock.
type Mark struct {
	At     time.Duration `json:"at"`
	Kind   string        `json:"kind"`
	Pod    string        `json:"pod,omitempty"`
	Detail string        `json:"detail,omitempty"`
}

// HPA is what the Horizontal Pod Autoscaler the gateway chart ships would see: its target
// (autoscaling.targetCPUUtilizationPercentage, 80 in manifests/charts/gateway/values.yaml) and
// sync period (kube-controller-manager --horizontal-pod-autoscaler-sync-period, 15s).
type HPA struct {
	Target float64
	Sync   time.Duration
}

// DefaultHPA is the chart's and the controller manager's.
var DefaultHPA = HPA{Target: 0.8, Sync: 15 * time.Second}

// saturated is the busy share at which a worker is taken as saturated.
const saturated = 0.9

// HPABlind says whether the autoscaler is blind to the hot spot: in every sync period the
// pool's CPU utilisation against its request (the HPA's metric: the pods' usage summed over
// their requests summed, pkg/controller/podautoscaler/replica_calculator.go
// GetResourceReplicas) stays under the target while the busiest worker is saturated, for at
// least two sync periods in a row, so the HPA never scales although one thread is pegged.
type HPABlind struct {
	Blind bool `json:"blind"`
	// HeldS is the longest run of sync periods read as blind, NeedS two sync periods.
	HeldS float64 `json:"held_s"`
	NeedS float64 `json:"need_s"`
	// UtilisationMean is the pool's mean utilisation over the window, BusyMaxMean the
	// busiest worker's mean busy share.
	UtilisationMean float64 `json:"utilisation_mean"`
	BusyMaxMean     float64 `json:"busy_max_mean"`
	Target          float64 `json:"target"`
	Text            string  `json:"text"`
}

// hpaBlind reads the samples as the HPA would: averaged over each sync period (the HPA reads
// the resource metrics' average usage, not an instant). The request of a pod is its
// workers' cores (the lab sets the CPU request to the concurrency).
func hpaBlind(samples []Sample, h HPA, step time.Duration) *HPABlind {
	if len(samples) == 0 || h.Sync <= 0 {
		return nil
	}
	out := &HPABlind{Target: h.Target, NeedS: (2 * h.Sync).Seconds()}
	per := max(1, int(h.Sync/step))
	run, best := 0.0, 0.0
	var util, busy []float64
	for _, s := range samples {
		cpu, req, b := 0.0, 0.0, 0.0
		for _, p := range s.Pods {
			cpu += p.CPU
			req += float64(p.Workers)
			b = math.Max(b, p.BusyMax)
		}
		util, busy = append(util, ratio(cpu, req)), append(busy, b)
	}
	out.UtilisationMean, out.BusyMaxMean = mean(util), mean(busy)
	// Whole sync periods only: a part-period at the end is not a reading the HPA made.
	for i := 0; i+per <= len(samples); i += per {
		if mean(util[i:i+per]) < h.Target && mean(busy[i:i+per]) >= saturated {
			run += (time.Duration(per) * step).Seconds()
			best = math.Max(best, run)
		} else {
			run = 0
		}
	}
	out.HeldS = best
	out.Blind = best >= out.NeedS
	verb := "is not blind: "
	switch {
	case out.Blind:
		verb = "is blind to the hot spot: "
	case out.BusyMaxMean < saturated:
		verb = "has no pegged worker to miss: "
	}
	// Tenths of a second: the local pool's sync periods are 1.5 s.
	tenths := func(s float64) string { return strconv.FormatFloat(math.Round(10*s)/10, 'f', -1, 64) }
	out.Text = fmt.Sprintf("the HPA %sutilisation %.0f%% of the request on average against a %.0f%% target while the busiest worker is %.0f%% busy; blind for %s s of the %s s (two sync periods) it takes",
		verb, 100*out.UtilisationMean, 100*h.Target, 100*out.BusyMaxMean, tenths(out.HeldS), tenths(out.NeedS))
	return out
}

// OverTime is what a window with events shows over time.
type OverTime struct {
	Events []Mark `json:"events"`
	// NewPods are the pods that appeared during the window; NewShare their share of the
	// requests per sample, NewShareEnd over the window's last quarter, and NewConnShare the
	// same for active connections.
	NewPods      []string  `json:"new_pods,omitempty"`
	NewShare     []float64 `json:"new_share,omitempty"`
	NewShareEnd  float64   `json:"new_share_end"`
	NewConnShare float64   `json:"new_conn_share_end"`
	FairShareEnd float64   `json:"fair_share_end"` // the new pods' count over all pods serving at the end
	// BalancedAtS is the time from the first event to the first of two samples in a row
	// whose spread of active connections over the serving pods is within chance; -1: not
	// within the window.
	BalancedAtS float64 `json:"balanced_at_s"`
	// StormPeak is the most connections opened in one second after an event, and
	// HandshakePeak the TLS handshakes; Baseline is the rate before the first event.
	StormPeak     float64 `json:"storm_peak_cps"`
	HandshakePeak float64 `json:"handshake_peak_per_s"`
	StormBaseline float64 `json:"storm_baseline_cps"`
	// SkewEnd is the CV of the request rate over the serving pods in the window's last
	// quarter, and SkewChance its chance band for the connections open then.
	SkewEnd    float64 `json:"skew_end"`
	SkewChance string  `json:"skew_chance"`
	// Bursts are the seconds (from the window's start) where reconnects came in a burst (more
	// than twice the window's mean rate and a fifth of the open connections), PeriodS the
	// median gap between bursts, and BurstShare the share of new connections they carry.
	Bursts     []float64 `json:"bursts,omitempty"`
	PeriodS    float64   `json:"burst_period_s"`
	BurstShare float64   `json:"burst_share"`
}

// overTime computes the measures of a window with events.
func overTime(samples []Sample, marks []Mark, initial []string, step time.Duration) *OverTime {
	if len(samples) == 0 {
		return nil
	}
	o := &OverTime{Events: marks, BalancedAtS: -1}
	first := time.Duration(0)
	if len(marks) > 0 {
		first = marks[0].At
	}
	was := map[string]bool{}
	for _, n := range initial {
		was[n] = true
	}
	seen := map[string]bool{}
	for _, s := range samples {
		for n := range s.Pods {
			if !was[n] && !seen[n] {
				seen[n] = true
				o.NewPods = append(o.NewPods, n)
			}
		}
	}
	sort.Strings(o.NewPods)
	tail := samples[len(samples)*3/4:]
	var endNew, endAll, endNewCx, endAllCx float64
	for _, s := range samples {
		all, nw := 0.0, 0.0
		for n, p := range s.Pods {
			all += p.RPS
			if seen[n] {
				nw += p.RPS
			}
		}
		o.NewShare = append(o.NewShare, ratio(nw, all))
	}
	for _, s := range tail {
		for n, p := range s.Pods {
			endAll += p.RPS
			endAllCx += p.CxActive
			if seen[n] {
				endNew += p.RPS
				endNewCx += p.CxActive
			}
		}
	}
	o.NewShareEnd, o.NewConnShare = ratio(endNew, endAll), ratio(endNewCx, endAllCx)
	last := samples[len(samples)-1]
	serving := 0
	for n, p := range last.Pods {
		if p.RPS > 0 || p.CxActive > 0 || seen[n] {
			serving++
		}
	}
	o.FairShareEnd = ratio(float64(len(o.NewPods)), float64(serving))
	o.balance(samples, first)
	o.storm(samples, first, step)
	o.skew(tail)
	o.bursts(samples, step)
	return o
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// balance finds the first time after the first event when the active connections spread over
// the pods that exist is within chance for their number, two samples in a row, once the pool
// has placed at least one connection since the event and, after a scale-out, the new pods hold
// one: until then the spread is the placement from before it, and with fewer connections than
// pods any spread passes for chance (three connections that never reach the three new pods of
// six are "within chance").
func (o *OverTime) balance(samples []Sample, from time.Duration) {
	isNew := map[string]bool{}
	for _, n := range o.NewPods {
		isNew[n] = true
	}
	streak := 0
	placed := 0.0
	for _, s := range samples {
		if s.Elapsed < from {
			continue
		}
		var cx []float64
		total, onNew := 0.0, 0.0
		for n, p := range s.Pods {
			cx = append(cx, p.CxActive)
			total += p.CxActive
			placed += p.NewCx
			if isNew[n] {
				onNew += p.CxActive
			}
		}
		reached := len(isNew) == 0 || onNew > 0
		ok := false
		if k := int(math.Round(total)); k > 0 && len(cx) > 1 && placed > 0 && reached {
			verdict, _ := Chance(k, len(cx)).Judge(CV(cx))
			ok = verdict != MoreConcentrated
		}
		if !ok {
			streak = 0
			continue
		}
		if streak++; streak == 2 {
			o.BalancedAtS = (s.Elapsed - from).Seconds()
			return
		}
	}
}

// storm is the peak rate of new connections and handshakes after the first event.
func (o *OverTime) storm(samples []Sample, from, step time.Duration) {
	before, n := 0.0, 0
	for _, s := range samples {
		cx, hs := 0.0, 0.0
		for _, p := range s.Pods {
			cx += p.NewCx
			hs += p.Handshakes
		}
		cx, hs = cx/step.Seconds(), hs/step.Seconds()
		if s.Elapsed < from {
			before += cx
			n++
			continue
		}
		o.StormPeak, o.HandshakePeak = math.Max(o.StormPeak, cx), math.Max(o.HandshakePeak, hs)
	}
	if n > 0 {
		o.StormBaseline = before / float64(n)
	}
}

// skew is the spread of the request rate over the pods serving at the end.
func (o *OverTime) skew(tail []Sample) {
	per := map[string]float64{}
	open := 0.0
	for _, s := range tail {
		for n, p := range s.Pods {
			per[n] += p.RPS
		}
	}
	for _, p := range tail[len(tail)-1].Pods {
		open += p.CxActive
	}
	var v []float64
	for _, r := range per {
		v = append(v, r)
	}
	o.SkewEnd = CV(v)
	if k := int(math.Round(open)); k > 0 && len(v) > 1 {
		b := Chance(k, len(v))
		verdict, _ := b.Judge(o.SkewEnd)
		o.SkewChance = verdict + " (" + b.String() + ")"
	}
}

// bursts finds the seconds where reconnects bunch.
func (o *OverTime) bursts(samples []Sample, step time.Duration) {
	rates := make([]float64, len(samples))
	total := 0.0
	for i, s := range samples {
		for _, p := range s.Pods {
			rates[i] += p.NewCx
		}
		total += rates[i]
	}
	openSum := 0.0
	for _, s := range samples {
		sum := 0.0
		for _, p := range s.Pods {
			sum += p.CxActive
		}
		openSum = math.Max(openSum, sum)
	}
	mean := total / float64(len(samples))
	inBursts := 0.0
	for i, r := range rates {
		// The first sample holds the connections the window opened with, not a reconnect.
		if i == 0 || r <= 2*mean || r < 0.2*openSum {
			continue
		}
		at := samples[i].Elapsed.Seconds()
		if n := len(o.Bursts); n > 0 && at-o.Bursts[n-1] <= 1.5*step.Seconds() {
			inBursts += r
			continue // the same burst spilling into the next sample
		}
		o.Bursts = append(o.Bursts, at)
		inBursts += r
	}
	o.BurstShare = ratio(inBursts, total-rates[0])
	if len(o.Bursts) >= 2 {
		var gaps []float64
		for i := 1; i < len(o.Bursts); i++ {
			gaps = append(gaps, o.Bursts[i]-o.Bursts[i-1])
		}
		slices.Sort(gaps)
		o.PeriodS = gaps[len(gaps)/2]
	}
}
