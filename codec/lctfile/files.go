package lctfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"lcttop/codec/safetensors"
)

// PackFile packs the safetensors file at inPath into an .lct file at
// outPath. Errors start with the path they concern; nothing is left at
// outPath unless the whole file was written.
func PackFile(inPath, outPath string, opt Options) error {
	in, err := ReadInput(inPath)
	if err != nil {
		return err
	}
	st, err := safetensors.Parse(in)
	if err != nil {
		return fmt.Errorf("%s: %w", inPath, err)
	}
	out, err := createAtomic(outPath)
	if err != nil {
		return err
	}
	defer out.abort()
	lct, err := Pack(st, opt)
	if err != nil {
		return fmt.Errorf("%s: %w", inPath, err)
	}
	return out.commit(lct)
}

// UnpackFile restores the safetensors file that the .lct file at inPath
// holds, writing it to outPath only once every checksum has matched.
func UnpackFile(inPath, outPath string, backend Backend) error {
	in, err := ReadInput(inPath)
	if err != nil {
		return err
	}
	out, err := createAtomic(outPath)
	if err != nil {
		return err
	}
	defer out.abort()
	st, err := Unpack(in, backend)
	if err != nil {
		return fmt.Errorf("%s: %w", inPath, err)
	}
	return out.commit(st)
}

// WriteFileAtomic writes data to path through a temporary file in the same
// folder, synced and renamed into place: readers see the old file or the
// whole new one, never a part, and a failure leaves nothing behind.
func WriteFileAtomic(path string, data []byte) error {
	f, err := createAtomic(path)
	if err != nil {
		return err
	}
	defer f.abort()
	return f.commit(data)
}

// ReadInput reads a whole input file, with an error that starts with the
// path and says only what the system said ("no such file or directory").
func ReadInput(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read: %w", path, pathReason(err))
	}
	return b, nil
}

// pathReason drops the operation and path that *fs.PathError repeats, since
// our messages name the file already.
func pathReason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// atomicFile is a temporary file that becomes path on commit.
type atomicFile struct {
	path string
	tmp  *os.File
	done bool
}

// createAtomic opens the temporary file at once, so that an unwritable
// destination is reported before any work is done.
func createAtomic(path string) (*atomicFile, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%s: cannot write: is a directory", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("%s: cannot write: %w", path, pathReason(err))
	}
	return &atomicFile{path: path, tmp: tmp}, nil
}

func (f *atomicFile) commit(data []byte) error {
	fail := func(err error) error { return fmt.Errorf("%s: cannot write: %w", f.path, pathReason(err)) }
	if _, err := f.tmp.Write(data); err != nil {
		return fail(err)
	}
	if err := f.tmp.Chmod(0o644); err != nil {
		return fail(err)
	}
	if err := f.tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := f.tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(f.tmp.Name(), f.path); err != nil {
		return fail(err)
	}
	f.done = true
	// Sync the folder so the rename itself survives a crash; a folder that
	// cannot be opened or synced (some file systems) costs only that.
	if dir, err := os.Open(filepath.Dir(f.path)); err == nil {
		_ = dir.Sync()
		_ = dir.Close()
	}
	return nil
}

// abort removes the temporary file unless commit renamed it into place.
func (f *atomicFile) abort() {
	if f.done {
		return
	}
	_ = f.tmp.Close()
	_ = os.Remove(f.tmp.Name())
}
