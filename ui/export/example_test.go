package export_test

import (
	"fmt"

	"lcttop/codec"
	"lcttop/session"
	"lcttop/ui/export"
)

func ExampleCSV() {
	s := &session.Snapshot{Step: 7, Tensors: []session.TensorStats{{Name: "wte", Class: session.ClassWeight, Elements: 65536, Preset: codec.Clean, Distribution: codec.Gaussian, Ratio: 1.4376, StoredBytes: 91167}}}
	b, _ := export.CSV(s)
	fmt.Print(string(b))
	// Output:
	// step,name,class,elements,preset,distribution,ratio,stored_bytes,allocated_bits,used_bits,entropy,expected_bits,escape_rate,overflow_rate,spill_stream_rate,fallback
	// 7,wte,weight,65536,clean,gaussian,1.4376,91167,0,0,0,0,0,0,0,false
}
