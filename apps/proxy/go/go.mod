module promptly/apps/proxy

go 1.19
