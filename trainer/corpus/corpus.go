// Package corpus embeds the built-in training text: the project's own Go
// sources and docs, so that training works on a fresh machine with no
// download. go:embed cannot reach outside this directory, so corpus.txt is
// generated from the repository and committed; regenerate it with
//
//	go generate ./trainer/corpus
package corpus

import _ "embed"

//go:generate go run ./internal/gencorpus -root ../.. -out corpus.txt -max 1000000

// Text is the built-in corpus.
//
//go:embed corpus.txt
var Text []byte
