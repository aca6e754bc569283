package contract

import (
	"context"
	"io"
)

// Demo drives mu-plugin-fake through every seam.
func Demo(ctx context.Context, argv []string, out io.Writer) error { return nil }
