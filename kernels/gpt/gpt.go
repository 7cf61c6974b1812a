// Package gpt embeds the PTX of the GPT training kernels (gpt.cu) that the
// CUDA trainer backend (trainer/cudabackend) launches.
//
// gpt.ptx is generated from gpt.cu by `go generate ./kernels/gpt` with nvcc
// 11.8 for compute_80 (PTX ISA 7.8, which any driver from 520 on compiles for
// its GPU, Hopper included). --fmad=false keeps every product and sum rounded
// on its own, as the CPU ops compute them.
package gpt

import _ "embed"

//go:generate nvcc -ptx -arch=compute_80 --fmad=false -o gpt.ptx gpt.cu

// PTX is the module's source, for cuModuleLoadData.
//
//go:embed gpt.ptx
var PTX string

// Source is gpt.cu itself: the CPU emulation compiles it as C++, and a test
// checks that every kernel named in Kernels is defined in it.
//
//go:embed gpt.cu
var Source string

// Kernels lists the module's entry points.
var Kernels = []string{
	"gpt_embedding_forward",
	"gpt_embedding_backward_wte",
	"gpt_embedding_backward_wpe",
	"gpt_add",
	"gpt_add_v8",
	"gpt_gelu_forward",
	"gpt_gelu_forward_v8",
	"gpt_gelu_backward",
	"gpt_gelu_backward_v8",
	"gpt_gelu_backward_forward",
	"gpt_gelu_backward_forward_v8",
	"gpt_layernorm_stats",
	"gpt_layernorm_forward",
	"gpt_layernorm_apply",
	"gpt_layernorm_apply_v8",
	"gpt_layernorm_backward_rows",
	"gpt_layernorm_backward",
	"gpt_layernorm_backward_dx",
	"gpt_layernorm_backward_dx_v8",
	"gpt_layernorm_params_partial",
	"gpt_bias_fill",
	"gpt_bias_fill_v8",
	"gpt_colsum_partial",
	"gpt_colsum_finish",
	"gpt_crossentropy",
	"gpt_attn_softmax",
	"gpt_attn_softmax_backward",
	"gpt_heads_to_bf16",
	"gpt_flash_fwd_d16",
	"gpt_flash_fwd_d32",
	"gpt_flash_fwd_d64",
	"gpt_flash_dq_d16",
	"gpt_flash_dq_d32",
	"gpt_flash_dq_d64",
	"gpt_flash_dkdv_d16",
	"gpt_flash_dkdv_d32",
	"gpt_flash_dkdv_d64",
	"gpt_adamw",
	"gpt_adamw_v8",
	"gpt_sgd",
}

// Launch shapes the host code and the kernels agree on.
const (
	LayerNormThreads  = 256  // LN_THREADS: threads per block of the LayerNorm row kernels
	LayerNormChunk    = 1024 // LN_CHUNK: columns staged at once; gpt_layernorm_forward takes rows up to this long
	LayerNormStatRows = 16   // LN_STAT_ROWS: rows per block of gpt_layernorm_stats
	LayerNormBackRows = 4    // LN_BACK_ROWS: rows per block of gpt_layernorm_backward_rows
	AttentionThreads  = 128  // ATT_THREADS: threads per row of the attention softmax kernels
	FlashThreads      = 128  // FA_THREADS: threads per block of the fused attention kernels
	FlashTile         = 64   // FA_TILE: queries (or keys) per block of the fused attention kernels
)
