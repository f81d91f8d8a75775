// The -promql mode of promrules: Grafana's PromQL queries, their variables replaced as Grafana
// interpolates them, through Prometheus's PromQL parser.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
)

// builtins are values for Grafana's global variables a Prometheus query can use, each of the
// form Grafana substitutes: durations for $__interval, $__rate_interval and $__range, plain
// numbers for their _ms and _s variants and for $__from and $__to (epoch milliseconds).
var builtins = map[string]string{
	"__interval":         "1m",
	"__interval_ms":      "60000",
	"__rate_interval":    "4m",
	"__rate_interval_ms": "240000",
	"__range":            "1h",
	"__range_s":          "3600",
	"__range_ms":         "3600000",
	"__from":             "1700000000000",
	"__to":               "1700003600000",
}

// reference matches the ways a Grafana query names a variable: ${name}, ${name:format},
// [[name]], [[name:format]] and $name.
var reference = regexp.MustCompile(`\$\{(\w+)(?::[^}]*)?\}|\[\[(\w+)(?::[^\]]*)?\]\]|\$(\w+)`)

// variableName is what Grafana takes as a variable's name.
var variableName = regexp.MustCompile(`^\w+$`)

// variables are the -var NAME=VALUE flags: a dashboard template variable's value.
type variables map[string]string

func (v variables) String() string { return fmt.Sprint(map[string]string(v)) }

func (v variables) Set(text string) error {
	name, value, found := strings.Cut(text, "=")
	if !found || !variableName.MatchString(name) {
		return fmt.Errorf("%q is not NAME=VALUE", text)
	}
	v[name] = value
	return nil
}

// interpolate replaces each variable `expr` names that is a built-in or one of `values` (which
// win), whatever the format asked for; as Grafana does, an unknown name is left as written.
func interpolate(expr string, values variables) string {
	return reference.ReplaceAllStringFunc(expr, func(ref string) string {
		parts := reference.FindStringSubmatch(ref)
		name := parts[1] + parts[2] + parts[3]
		if value, ok := values[name]; ok {
			return value
		}
		if value, ok := builtins[name]; ok {
			return value
		}
		return ref
	})
}

// checkExpressions parses every expression of `file` (a JSON array of strings) once
// interpolated; "<n> expressions", or one error per expression the parser refuses, naming its
// position in the array and the text parsed.
func checkExpressions(file string, promql parser.Parser, values variables) (string, []error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", []error{err}
	}
	var exprs []string
	if err := json.Unmarshal(data, &exprs); err != nil {
		return "", []error{fmt.Errorf("%s: not a JSON array of expressions: %w", file, err)}
	}
	var errs []error
	for i, expr := range exprs {
		parsed := interpolate(expr, values)
		if _, err := promql.ParseExpr(parsed); err != nil {
			errs = append(errs, fmt.Errorf("%s: expression %d, %q: %w", file, i+1, parsed, err))
		}
	}
	return fmt.Sprintf("%d expressions", len(exprs)), errs
}
