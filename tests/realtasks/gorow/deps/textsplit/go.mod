module example.invalid/textsplit

go 1.19
