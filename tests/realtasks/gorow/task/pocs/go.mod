module example.invalid/gorow-poc

go 1.19

require example.invalid/gorow v0.0.0

require example.invalid/textsplit v1.0.0 // indirect

replace example.invalid/gorow => /src/gorow
