//go:build !amd64

package vec

// archImpls: only the plain Go implementation off amd64.
func archImpls() []impl { return nil }
