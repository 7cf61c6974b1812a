// The kernels of lct.cu in the emulation's table (emu.h).

#include "emu.h"
#include "lct.cu"

extern const EmuKernel emu_lct_kernels[] = {
    EMU_KERNEL(lct_encode),
    EMU_KERNEL(lct_decode),
    EMU_KERNEL(lct_decode_pipe),
    EMU_KERNEL(lct_encode_batch),
    EMU_KERNEL(lct_encode_batch_hist),
    EMU_KERNEL(lct_decode_batch),
    EMU_KERNEL(lct_decode_batch_pipe),
    EMU_KERNEL(lct_decode3),
    EMU_KERNEL(lct_measure3),
    EMU_KERNEL(lct_encode3),
    EMU_KERNEL(lct_batch_clear_errors),
    EMU_KERNEL(lct_sample_hist),
    EMU_KERNEL(lct_hist),
    EMU_KERNEL(lct_sgd_bf16),
    EMU_KERNEL(lct_adamw_bf16),
    EMU_KERNEL(lct_sgd_lct),
    EMU_KERNEL(lct_sgd_lct_ovf),
    EMU_KERNEL(lct_adamw_lct),
    EMU_KERNEL(lct_adamw_lct_ovf),
    EMU_KERNEL(lct_fill_gaussian),
};
extern const int emu_lct_kernel_count = sizeof(emu_lct_kernels) / sizeof(emu_lct_kernels[0]);
