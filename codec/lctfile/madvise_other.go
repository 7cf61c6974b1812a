//go:build !unix

package lctfile

func adviseSequential([]byte) {}
func dontNeed(_, _ []byte)    {}
