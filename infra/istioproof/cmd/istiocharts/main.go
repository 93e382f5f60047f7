// Command istiocharts writes the Istio charts of this module's Istio release into a folder, laid
// out as `helm pull istio/<chart> --untar` leaves them, for igwlab:upstreamDir: the program's
// Helm releases then install from them instead of Istio's chart repository.
//
//	go run ./cmd/istiocharts -out DIR   (from infra/istioproof)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/igwlab/igwlab/infra/istioproof"
)

func main() {
	if err := Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "istiocharts:", err)
		os.Exit(1)
	}
}

// Run parses the flags and writes the charts.
func Run(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("istiocharts", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "folder to write the charts into (one subfolder per chart)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("-out is required")
	}
	if err := istioproof.ExtractCharts(*out, istioproof.Pinned); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: Istio %s charts\n", *out, istioproof.Pinned)
	return nil
}
