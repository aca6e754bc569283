package protocol

import (
	"encoding/json"
)

// The handshake: initialize, and $/cancel. The declaration's seams are in
// decl.go.

// VersionRange is the protocol range mu offers.
type VersionRange struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// InitializeParams is what mu sends first.
type InitializeParams struct {
	Protocol VersionRange `json:"protocol"`
	Mu       string       `json:"mu"`
}

// PluginInfo names the plugin in the handshake.
type PluginInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// InitializeResult is the plugin's answer to initialize: its declaration.
type InitializeResult struct {
	Protocol int        `json:"protocol"`
	Plugin   PluginInfo `json:"plugin"`
	Instance string     `json:"instance"`
	Schema   string     `json:"schema"`
	Seams    Seams      `json:"seams"`
}

// CancelParams is $/cancel: exactly one of ID (a pending call's envelope id)
// or WatchID (a watch to end).
type CancelParams struct {
	ID      json.RawMessage `json:"id,omitempty"`
	WatchID string          `json:"watchId,omitempty"`
}
