module promptly/bench

go 1.19
