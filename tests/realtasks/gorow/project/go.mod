module example.invalid/gorow

go 1.19

require example.invalid/textsplit v1.0.0
