package diagnose

import "github.com/igwlab/igwlab/stacks"

// savedScenario is a scenario file as diagnose writes it: the catalog's fields in the
// catalog's order, only those it sets (stacks.Scenario writes every field, set or not).
type savedScenario struct {
	Name      string            `yaml:"name"`
	Order     int               `yaml:"order"`
	Title     string            `yaml:"title"`
	Optional  bool              `yaml:"optional,omitempty"`
	Teaches   string            `yaml:"teaches"`
	Watch     string            `yaml:"watch"`
	Client    savedClient       `yaml:"client"`
	Load      savedLoad         `yaml:"load"`
	Knobs     map[string]any    `yaml:"knobs,omitempty"`
	Pool      savedPool         `yaml:"pool"`
	Local     *savedLocal       `yaml:"local,omitempty"`
	Diagnosed *stacks.Diagnosed `yaml:"diagnosed"`
}

type savedClient struct {
	Kind        string  `yaml:"kind"`
	Mode        string  `yaml:"mode,omitempty"`
	Concurrency int     `yaml:"concurrency"`
	Connections int     `yaml:"connections,omitempty"`
	Path        string  `yaml:"path,omitempty"`
	QPS         float64 `yaml:"qps,omitempty"`
	Authority   string  `yaml:"authority,omitempty"`
	LongStream  bool    `yaml:"long_stream,omitempty"`
}

func savedClientOf(c stacks.Client) savedClient {
	return savedClient{Kind: c.Kind, Mode: c.Mode, Concurrency: c.Concurrency, Connections: c.Connections,
		Path: c.Path, QPS: c.QPS, Authority: c.Authority, LongStream: c.LongStream}
}

type savedLoad struct {
	Duration string `yaml:"duration"`
	Warmup   string `yaml:"warmup"`
	Settle   string `yaml:"settle"`
}

type savedPool struct {
	Replicas    int    `yaml:"replicas,omitempty"`
	Concurrency int    `yaml:"concurrency,omitempty"`
	CPULimit    string `yaml:"cpu_limit,omitempty"`
}

type savedLocal struct {
	Load   savedLoad        `yaml:"load"`
	Client savedLocalClient `yaml:"client,omitempty"`
	Pool   *savedPool       `yaml:"pool,omitempty"`
	Why    string           `yaml:"why"`
}

type savedLocalClient struct {
	QPS         float64 `yaml:"qps,omitempty"`
	Concurrency int     `yaml:"concurrency,omitempty"`
	Connections int     `yaml:"connections,omitempty"`
}
