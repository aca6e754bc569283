package docker

// maxStream is the most of one stream a run keeps; internal/outcap then fits
// both streams into the reply.
const maxStream = 1 << 20
