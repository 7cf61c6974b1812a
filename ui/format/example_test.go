package format_test

import (
	"fmt"

	"lcttop/ui/format"
)

func Example() {
	fmt.Println(format.Bytes(3<<20), format.Count(65536), format.Percent(0.0123))
	// Output: 3.00 MiB 65.5k 1.23%
}
