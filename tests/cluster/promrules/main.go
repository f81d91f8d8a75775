// Command promrules checks Prometheus rule files as `promtool check rules` reads them: with
// Prometheus's own rulefmt.ParseFile (the YAML shape with unknown fields refused, every expr
// through the PromQL parser, the label and annotation templates). For each file it prints
// "<file>: <n> rules", or each error on stderr.
//
// With -promql, each file is instead a JSON array of PromQL expressions as a Grafana dashboard
// holds them: each has Grafana's variables replaced (promql.go: the built-in ones such as
// $__rate_interval, and the values given with -var NAME=VALUE) and goes through the PromQL
// parser (parsing and type checking); it prints "<file>: <n> expressions", or each error on
// stderr.
//
// Exit status 1 if any file has an error, 2 on bad usage (no files, a malformed -var).
package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

func main() {
	expressions := flag.Bool("promql", false,
		"the files are JSON arrays of PromQL expressions (Grafana queries), not rule files")
	values := variables{}
	flag.Var(values, "var", "a dashboard template variable's value, as `NAME=VALUE` "+
		"(with -promql; repeatable)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: promrules FILE...\n       promrules -promql [-var NAME=VALUE]... FILE...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 || (len(values) > 0 && !*expressions) {
		flag.Usage()
		os.Exit(2)
	}
	promql := parser.NewParser(parser.Options{})
	failed := false
	for _, file := range flag.Args() {
		var summary string
		var errs []error
		if *expressions {
			summary, errs = checkExpressions(file, promql, values)
		} else {
			summary, errs = checkRules(file, promql)
		}
		for _, err := range errs {
			fmt.Fprintln(os.Stderr, err)
		}
		if len(errs) > 0 {
			failed = true
			continue
		}
		fmt.Printf("%s: %s\n", file, summary)
	}
	if failed {
		os.Exit(1)
	}
}

// checkRules parses the rule file `file` as `promtool check rules` does; "<n> rules", or the
// errors found.
func checkRules(file string, promql parser.Parser) (string, []error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	groups, errs := rulefmt.ParseFile(file, false, model.UTF8Validation, promql, quiet)
	if len(errs) > 0 {
		return "", errs
	}
	rules := 0
	for _, group := range groups.Groups {
		rules += len(group.Rules)
	}
	return fmt.Sprintf("%d rules", rules), nil
}
