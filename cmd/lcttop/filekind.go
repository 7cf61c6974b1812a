package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"lcttop/codec/lctfile"
)

// fileKind is what a file's first bytes say it is: "lct", "safetensors",
// or "" (neither, unreadable, or not a regular file, whose bytes a look
// would take from the command: the command's own read says why).
func fileKind(path string) string {
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var head [9]byte
	n, _ := io.ReadFull(f, head[:])
	switch b := head[:n]; {
	case bytes.HasPrefix(b, []byte(lctfile.Magic)):
		return "lct"
	case n == 9 && binary.LittleEndian.Uint64(b[:8]) < 100<<20 && b[8] == '{':
		return "safetensors"
	}
	return ""
}

// packInputKind refuses an input pack cannot take when it is the file
// unpack takes, naming the command that fits.
func packInputKind(in string) error {
	if fileKind(in) == "lct" {
		return fmt.Errorf("%s: is an .lct file already (what lcttop pack writes); lcttop unpack %s OUT.safetensors restores its safetensors file", in, in)
	}
	return nil
}

// unpackInputKind is packInputKind for unpack.
func unpackInputKind(in string) error {
	if fileKind(in) == "safetensors" {
		return fmt.Errorf("%s: is a safetensors file, not an .lct file; lcttop pack %s OUT.lct compresses it", in, in)
	}
	return nil
}
