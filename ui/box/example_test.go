package box_test

import (
	"fmt"
	"strings"

	"lcttop/ui/box"
)

func ExampleFit() {
	for _, l := range strings.Split(box.Fit("a line longer than the box\nshort", 10, 3), "\n") {
		fmt.Printf("[%s]\n", l)
	}
	// Output:
	// [a line lo…]
	// [short     ]
	// [          ]
}
