package export_test

import (
	"fmt"

	"lcttop/trainer"
	"lcttop/ui/export"
)

func ExampleCSV() {
	s := &trainer.Snapshot{Step: 7, Tensors: []trainer.TensorStats{{Name: "wte", Class: trainer.ClassWeight, Elements: 65536, Preset: "clean", Distribution: "gaussian", Ratio: 1.4376, StoredBytes: 91167}}}
	b, _ := export.CSV(s)
	fmt.Print(string(b))
	// Output:
	// step,name,class,elements,preset,distribution,ratio,stored_bytes,allocated_bits,used_bits,entropy,expected_bits,escape_rate,overflow_rate,spill_stream_rate,fallback
	// 7,wte,weight,65536,clean,gaussian,1.4376,91167,0,0,0,0,0,0,0,false
}
