//go:build !unix

package filesource

func adviseRandom(all []byte) {}

func dontNeed(all, b []byte) {}

func willNeed(all, b []byte) {}
