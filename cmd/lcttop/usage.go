package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// prepareUsage makes cobra's usage errors one line with a hint (the usage
// line and where the help is), refuses unknown subcommands the same way,
// and wraps long flag help to the terminal.
func prepareUsage(root *cobra.Command) {
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError(c, err) })
	root.Args = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			var subs []string
			for _, s := range c.Commands() {
				if s.IsAvailableCommand() {
					subs = append(subs, s.Name())
				}
			}
			return fmt.Errorf("unknown command %q (commands: %s; see lcttop --help)", args[0], strings.Join(subs, ", "))
		}
		return nil
	}
	var wrap func(c *cobra.Command)
	wrap = func(c *cobra.Command) {
		if args := c.Args; args != nil && c != root {
			c.Args = func(c *cobra.Command, a []string) error {
				if err := args(c, a); err != nil {
					return usageError(c, err)
				}
				return nil
			}
		}
		for _, s := range c.Commands() {
			wrap(s)
		}
	}
	wrap(root)
	cobra.AddTemplateFunc("wrappedFlagUsages", func(fs *pflag.FlagSet) string { return fs.FlagUsagesWrapped(helpWidth()) })
	t := root.UsageTemplate()
	t = strings.ReplaceAll(t, ".LocalFlags.FlagUsages", "wrappedFlagUsages .LocalFlags")
	t = strings.ReplaceAll(t, ".InheritedFlags.FlagUsages", "wrappedFlagUsages .InheritedFlags")
	root.SetUsageTemplate(t)
}

// usageError is err with the command's usage line and where its help is.
func usageError(c *cobra.Command, err error) error {
	if m := badFlagValue.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("%s %q: %s (see %s --help)", m[2], m[1], parseProblem(m[3]), c.CommandPath())
	}
	return fmt.Errorf("%w (usage: %s; see %s --help)", err, c.UseLine(), c.CommandPath())
}

// badFlagValue is pflag's message for a value its type cannot parse.
var badFlagValue = regexp.MustCompile(`^invalid argument "(.*)" for "(?:-\w, )?(--[\w-]+)" flag: (.*)$`)

// parseProblem says in words what strconv or time found wrong.
func parseProblem(cause string) string {
	switch {
	case strings.Contains(cause, "value out of range"):
		return "out of range"
	case strings.HasPrefix(cause, "strconv.ParseInt"):
		return "not a whole number"
	case strings.HasPrefix(cause, "strconv.ParseUint"):
		return "not a whole number of 0 or more"
	case strings.HasPrefix(cause, "strconv.ParseFloat"):
		return "not a number"
	case strings.HasPrefix(cause, "strconv.ParseBool"):
		return "not true or false"
	case strings.HasPrefix(cause, "time: "):
		return "not a duration (like 250ms or 2s)"
	}
	return cause
}

// helpWidth is the terminal's width, 100 where there is none, at least 60.
func helpWidth() int {
	w, _, err := term.GetSize(os.Stdout.Fd())
	if err != nil || w <= 0 {
		return 100
	}
	return max(w, 60)
}
