package lctfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Output is a file being written so that nothing the user has is lost: a
// regular file (or a symbolic link to one, which stays a link) is written
// to a temporary file beside it and renamed over it on Commit, so readers
// see the old file or the whole new one; standard output ("-"), a
// character device, a FIFO or any other file that is not regular is
// written directly, never replaced. Abort, or an error, removes the
// temporary file.
type Output struct {
	name   string // as the caller named it
	target string // the file renamed over: name with its links followed
	f      *os.File
	direct bool // written in place: standard output, a device, a FIFO
	mode   fs.FileMode
	done   bool
}

// maxLinks bounds the symbolic links followed to an output's target.
const maxLinks = 40

// CreateOutput opens path for writing as Output describes: "-" is standard
// output. An unwritable destination is reported here, before any work.
func CreateOutput(path string) (*Output, error) {
	if path == "-" {
		return &Output{name: "standard output", f: os.Stdout, direct: true}, nil
	}
	fail := func(err error) (*Output, error) {
		return nil, fmt.Errorf("%s: cannot write: %w", path, pathReason(err))
	}
	o := &Output{name: path, mode: 0o644}
	direct := func(regular bool) (*Output, error) {
		// A device or a FIFO is written where it is; O_TRUNC means nothing
		// there. A regular file a system name leads to (/dev/stdout
		// redirected to one) is truncated, so that no byte of what it held
		// is left after the new file's.
		flag := os.O_WRONLY
		if regular {
			flag |= os.O_TRUNC
		}
		f, err := os.OpenFile(path, flag, 0)
		if err != nil {
			return fail(err)
		}
		o.f, o.direct = f, true
		return o, nil
	}
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return nil, fmt.Errorf("%s: cannot write: is a directory", path)
	case err == nil && (!fi.Mode().IsRegular() || systemPath(path)):
		return direct(fi.Mode().IsRegular())
	case err == nil:
		o.mode = fi.Mode().Perm()
		if o.target, err = filepath.EvalSymlinks(path); err != nil {
			return fail(err)
		}
	case errors.Is(err, fs.ErrNotExist):
		if o.target, err = followLinks(path); err != nil { // a new file, or a link to one
			return fail(err)
		}
	default:
		return fail(err)
	}
	target := o.target
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".tmp-*")
	if err != nil {
		return fail(err)
	}
	o.f = tmp
	return o, nil
}

// systemPath reports a name under /dev or /proc (/dev/stdout and the like,
// whatever they lead to): never replaced, always written in place. Files
// in /dev/shm, a file system like any other, are not.
func systemPath(path string) bool {
	abs, err := filepath.Abs(path)
	return err == nil && !strings.HasPrefix(abs, "/dev/shm/") && (strings.HasPrefix(abs, "/dev/") || strings.HasPrefix(abs, "/proc/"))
}

// followLinks returns the file path names once every symbolic link on the
// way is followed; the last link's target need not exist yet.
func followLinks(path string) (string, error) {
	for range maxLinks {
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return path, nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return path, nil
		}
		link, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(path), link)
		}
		path = link
	}
	return "", errors.New("too many levels of symbolic links")
}

// Name is the output as messages name it.
func (o *Output) Name() string { return o.name }

// Direct reports whether the output is written in place (standard output,
// a device, a FIFO): what was written before an error stays written.
func (o *Output) Direct() bool { return o.direct }

// TempName is the temporary file's path, "" for a direct output.
func (o *Output) TempName() string {
	if o.direct {
		return ""
	}
	return o.f.Name()
}

func (o *Output) Write(p []byte) (int, error) {
	n, err := o.f.Write(p)
	if err != nil {
		err = &writeError{name: o.name, err: pathReason(err)}
	}
	return n, err
}

// writeError is a failed write to an Output; its message names the output.
type writeError struct {
	name string
	err  error
}

func (e *writeError) Error() string { return e.name + ": cannot write: " + e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

// Commit finishes the output: a temporary file is synced and renamed over
// its target, then the folder synced; a direct output is closed (standard
// output is left open).
func (o *Output) Commit() error {
	fail := func(err error) error { return fmt.Errorf("%s: cannot write: %w", o.name, pathReason(err)) }
	if o.direct {
		o.done = true
		if o.f == os.Stdout {
			return nil
		}
		if err := o.f.Close(); err != nil {
			return fail(err)
		}
		return nil
	}
	if err := o.f.Chmod(o.mode); err != nil {
		return fail(err)
	}
	if err := o.f.Sync(); err != nil {
		return fail(err)
	}
	if err := o.f.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(o.f.Name(), o.target); err != nil {
		return fail(err)
	}
	o.done = true
	// Sync the folder so the rename itself survives a crash; a folder that
	// cannot be opened or synced (some file systems) costs only that.
	if dir, err := os.Open(filepath.Dir(o.target)); err == nil {
		_ = dir.Sync()
		_ = dir.Close()
	}
	return nil
}

// Abort removes the temporary file unless Commit renamed it into place; a
// direct output is closed. It may be called after Commit, and twice.
func (o *Output) Abort() {
	if o.done {
		return
	}
	o.done = true
	if o.f == os.Stdout {
		return
	}
	_ = o.f.Close()
	if !o.direct {
		_ = os.Remove(o.f.Name())
	}
}
