// Command workflowlint runs actionlint on GitHub workflow files; it is its own module because actionlint needs a go.yaml.in/yaml/v4 release the main module has moved past.
package main

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/rhysd/actionlint"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: workflowlint FILE...")
		os.Exit(2)
	}
	opts := &actionlint.LinterOptions{}
	if sc, err := exec.LookPath("shellcheck"); err == nil {
		opts.Shellcheck = sc // the step scripts too, when shellcheck is installed
	}
	l, err := actionlint.NewLinter(os.Stdout, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	errs, err := l.LintFiles(os.Args[1:], nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if len(errs) > 0 {
		os.Exit(1)
	}
}
