// Command promrules checks Prometheus rule files as `promtool check rules` reads them: with
// Prometheus's own rulefmt.ParseFile (the YAML shape with unknown fields refused, every expr
// through the PromQL parser, the label and annotation templates). For each file it prints
// "<file>: <n> rules", or each error on stderr; exit status 1 if any file has an error, 2 when
// called without files.
package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: promrules FILE...")
		os.Exit(2)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	promql := parser.NewParser(parser.Options{})
	failed := false
	for _, file := range os.Args[1:] {
		groups, errs := rulefmt.ParseFile(file, false, model.UTF8Validation, promql, quiet)
		for _, err := range errs {
			fmt.Fprintln(os.Stderr, err)
		}
		if len(errs) > 0 {
			failed = true
			continue
		}
		rules := 0
		for _, group := range groups.Groups {
			rules += len(group.Rules)
		}
		fmt.Printf("%s: %d rules\n", file, rules)
	}
	if failed {
		os.Exit(1)
	}
}
