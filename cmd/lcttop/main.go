// Command lcttop packs, inspects and trains through LCT, the lossless BF16
// tensor codec, and shows live what the compression buys.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// rootCmd is the lcttop command; each subcommand adds itself from its own
// file's init so that subcommands stay in files of their own.
var rootCmd = &cobra.Command{
	Use:           "lcttop",
	Short:         "Lossless BF16 tensor compression (LCT): pack, inspect, train and watch",
	SilenceUsage:  true,
	SilenceErrors: true,
}

func main() {
	prepareUsage(rootCmd)
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "lcttop:", err)
		if errors.As(err, new(interrupted)) {
			os.Exit(130) // as a shell reports a command ended by Ctrl-C
		}
		os.Exit(1)
	}
}

// interrupted is the error of a command stopped by Ctrl-C after it said
// what it had done: the exit status says it did not finish.
type interrupted struct{ what string }

func (e interrupted) Error() string { return "interrupted " + e.what }
