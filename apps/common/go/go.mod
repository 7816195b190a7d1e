module promptly/apps/common

go 1.19
