package modifier

import "github.com/volplane/volplane/internal/controller/resizing"

// Config is what the loop needs: the external-resizer's dependencies and
// settings, shared with the other of its two controllers.
type Config = resizing.Config
