package main

import (
	"fmt"
	"os"
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
	return fmt.Errorf("%w (usage: %s; see %s --help)", err, c.UseLine(), c.CommandPath())
}

// helpWidth is the terminal's width, 100 where there is none, at least 60.
func helpWidth() int {
	w, _, err := term.GetSize(os.Stdout.Fd())
	if err != nil || w <= 0 {
		return 100
	}
	return max(w, 60)
}
