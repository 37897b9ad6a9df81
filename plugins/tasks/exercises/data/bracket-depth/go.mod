module bracketdepth

go 1.22
