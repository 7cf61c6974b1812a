// Command gencorpus writes the trainer's built-in corpus: the repository's
// committed docs/*.md and *.go files, docs first, each in path order after a
// "==> path <==" line, stopping before the size limit.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	root := flag.String("root", ".", "repository root")
	out := flag.String("out", "corpus.txt", "output file")
	limit := flag.Int("max", 1<<20, "largest corpus, in bytes")
	flag.Parse()
	if err := run(*root, *out, *limit); err != nil {
		fmt.Fprintln(os.Stderr, "gencorpus:", err)
		os.Exit(1)
	}
}

func run(root, out string, limit int) error {
	cmd := exec.Command("git", "ls-files", "-z", "--", "docs/*.md", "*.go")
	cmd.Dir = root
	listing, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("listing the repository's files with git: %w", err)
	}
	var docs, code []string
	for _, f := range strings.Split(strings.TrimRight(string(listing), "\x00"), "\x00") {
		switch {
		case f == "":
		case path.Ext(f) == ".md":
			docs = append(docs, f)
		default:
			code = append(code, f)
		}
	}
	slices.Sort(docs)
	slices.Sort(code)
	var buf bytes.Buffer
	for _, f := range append(docs, code...) {
		b, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue // tracked but deleted in the working tree
		}
		if err != nil {
			return err
		}
		entry := fmt.Sprintf("==> %s <==\n%s\n", f, b)
		if buf.Len()+len(entry) > limit {
			continue // too big to fit whole; a smaller file may still fit
		}
		buf.WriteString(entry)
	}
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}
