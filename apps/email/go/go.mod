module promptly/apps/email

go 1.19

require promptly/apps/common v0.0.0

replace promptly/apps/common => ../../common/go
