package docker

// PinnedEndpoint is pinnedEndpoint, for the external tests.
var PinnedEndpoint = pinnedEndpoint
