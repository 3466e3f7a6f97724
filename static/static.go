// Package static embeds the operator's console (console.html, its CSS, its
// JS modules and the vendored chart library) so that the vestibule command
// serves it from the binary. The waiting page is not embedded: it is
// deployed to S3 and served from disk by the local stack.
package static

import (
	"embed"
	"io/fs"
)

//go:embed console.html console.css js/console*.js vendor/uplot
var console embed.FS

// Console is the console's files, console.html at the root.
var Console fs.FS = console
