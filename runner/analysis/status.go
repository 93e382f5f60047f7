package analysis

// Status is how a scenario run ended; it is the "status" of each scenario in summary.json.
type Status string

// The statuses a scenario run can end with.
const (
	// StatusOK is a run that completed and was analysed.
	StatusOK Status = "ok"
	// StatusSkipped is a run whose prerequisites the target does not meet.
	StatusSkipped Status = "skipped"
	// StatusFailed is a run that could not complete; Reason says why.
	StatusFailed Status = "failed"
	// StatusInterrupted is a run stopped by the user.
	StatusInterrupted Status = "interrupted"
	// StatusNotRun is a selected scenario the run never reached.
	StatusNotRun Status = "not-run"
)

// Finished says whether a run ended by itself: interrupted runs and runs never started are run
// again on resume; failed ones are kept, as the run's record of what happened.
func (s Status) Finished() bool {
	return s == StatusOK || s == StatusSkipped || s == StatusFailed
}

// OK reports whether the scenario run completed and was analysed.
func (r *Result) OK() bool { return r != nil && r.Status == StatusOK }
