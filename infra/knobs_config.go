package infra

import (
	"errors"

	"github.com/igwlab/igwlab/internal/configkey"
	"github.com/igwlab/igwlab/stacks"
)

// ParseKnobs reads igwlab:knobs: a JSON object of knob path to value, read by stacks.Knobs'
// own JSON decoding (each value checked against Envoy's range as the catalog is), with every
// problem reported as a ConfigError of the key.
func ParseKnobs(raw string) (stacks.Knobs, error) {
	var k stacks.Knobs
	err := k.UnmarshalJSON([]byte(raw))
	if errors.Is(err, stacks.ErrKnobsNotObject) {
		return k, &ConfigError{configkey.Knobs, raw, `a JSON object of knob path to value, such as {"hcm.http2_protocol_options.max_concurrent_streams": "100"}`}
	}
	var errs []error
	for _, e := range unjoin(err) {
		var ke *stacks.KnobJSONError
		if errors.As(e, &ke) {
			e = &ConfigError{configkey.Knobs, ke.Entry, ke.Allowed}
		}
		errs = append(errs, e)
	}
	return k, errors.Join(errs...)
}

// unjoin lists the errors errors.Join put together (err itself when it is a single one).
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
