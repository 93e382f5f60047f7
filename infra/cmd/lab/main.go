// Command lab is the Pulumi program of the lab (Pulumi.yaml's main): `pulumi up -s lab`.
package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/igwlab/igwlab/infra"
)

func main() { pulumi.Run(infra.Program) }
