package lctfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"lcttop/codec/torchfile"
)

// PackFile packs the safetensors file at inPath into an .lct file at
// outPath: PackPath without a way to stop it or a summary.
func PackFile(inPath, outPath string, opt Options) error {
	_, err := PackPath(context.Background(), inPath, outPath, opt)
	return err
}

// UnpackFile restores the safetensors file that the .lct file at inPath
// holds: UnpackPath without a way to stop it or a summary.
func UnpackFile(inPath, outPath string, backend Backend) error {
	_, err := UnpackPath(context.Background(), inPath, outPath, Options{Backend: backend})
	return err
}

// PackPath packs the safetensors file at inPath into an .lct file at
// outPath ("-" for standard input or output), streaming (PackStream).
// Errors start with the path they concern; the output is written as
// Output says, so that a failure or a cancelled ctx leaves a regular
// file's old contents in place and no temporary file.
//
// A PyTorch checkpoint (a torch.save file, a torch.distributed.checkpoint
// folder) is packed as the safetensors file of its tensors
// (OpenTorchInput); unpack restores that file.
func PackPath(ctx context.Context, inPath, outPath string, opt Options) (Summary, error) {
	return streamPath(ctx, openPackInput, inPath, outPath, func(in *Input, out *Output) (Summary, error) {
		return PackStream(ctx, in, out, opt)
	})
}

// openPackInput opens what pack reads: a PyTorch checkpoint as the
// safetensors file of its tensors, anything else as it is.
func openPackInput(path string) (*Input, error) {
	if path != "-" {
		if torchfile.IsFolder(path) {
			return OpenTorchInput(path)
		}
		if f, err := os.Open(path); err == nil {
			var head [16]byte
			n, _ := f.Read(head[:])
			f.Close()
			if torchfile.IsTorchSave(head[:n]) || torchfile.IsLegacyTorchSave(head[:n]) {
				return OpenTorchInput(path)
			}
		}
	}
	return OpenInput(path)
}

// UnpackPath restores the safetensors file that the .lct file at inPath
// holds to outPath, streaming (UnpackStream), written as PackPath writes.
// Every checksum is checked before a regular file is renamed into place;
// standard output, a FIFO or a device has what came before an error.
func UnpackPath(ctx context.Context, inPath, outPath string, opt Options) (Summary, error) {
	return streamPath(ctx, OpenInput, inPath, outPath, func(in *Input, out *Output) (Summary, error) {
		return UnpackStream(ctx, in, out, opt)
	})
}

func streamPath(ctx context.Context, open func(string) (*Input, error), inPath, outPath string, run func(*Input, *Output) (Summary, error)) (Summary, error) {
	in, err := open(inPath)
	if err != nil {
		return Summary{}, err
	}
	defer in.Close()
	out, err := CreateOutput(outPath)
	if err != nil {
		return Summary{}, err
	}
	defer out.Abort()
	sum, err := run(in, out)
	if err != nil {
		var we *writeError
		switch {
		case errors.As(err, &we):
			return sum, err
		case errors.Is(err, context.Canceled) && out.Direct():
			return sum, fmt.Errorf("interrupted: %s has what was written before", out.Name())
		case errors.Is(err, context.Canceled):
			return sum, fmt.Errorf("interrupted: %s left as it was", out.Name())
		}
		return sum, fmt.Errorf("%s: %w", in.Name(), err)
	}
	return sum, out.Commit()
}

// WriteFileAtomic writes data to path as Output writes it: a regular file
// (or a link to one) through a temporary file in the same folder, synced
// and renamed into place, so that readers see the old file or the whole new
// one and a failure leaves nothing behind; standard output ("-"), a device
// or a FIFO directly.
func WriteFileAtomic(path string, data []byte) error {
	out, err := CreateOutput(path)
	if err != nil {
		return err
	}
	defer out.Abort()
	if _, err := out.Write(data); err != nil {
		return err
	}
	return out.Commit()
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
