// Command echoargs prints its arguments and whether it was built with the
// race detector, for the tests of programs.Build.
package main

import (
	"fmt"
	"os"
	"strings"
)

func main() {
	fmt.Println(strings.Join(os.Args[1:], " "), raceBuilt)
}
