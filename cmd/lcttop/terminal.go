package main

import (
	"fmt"
	"os"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"
)

// checkTerminal refuses, before the full screen opens, a terminal that
// cannot show it: TERM=dumb (an editor's shell, a plain console), or
// standard input or output that is not a terminal. It names the headless
// form of the command.
func checkTerminal(cmd *cobra.Command) error {
	headless := "lcttop train --headless"
	if n := cmd.Name(); n == "open" || n == "watch" {
		headless = "lcttop " + n + " --headless"
	}
	switch {
	case os.Getenv("TERM") == "dumb":
		return fmt.Errorf("TERM=dumb: this terminal cannot show the full-screen UI; run %s for plain lines", headless)
	case !term.IsTerminal(os.Stdout.Fd()) || !term.IsTerminal(os.Stdin.Fd()):
		return fmt.Errorf("standard input or output is not a terminal, so the full-screen UI cannot open; run %s for plain lines", headless)
	}
	return nil
}
