package infra

import (
	"reflect"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// componentType is the type token of the lab's components.
func componentType(kind string) string { return "igwlab:lab:" + kind }

// isNilResource reports a typed nil pointer hiding in a Resource interface (a part that is off).
func isNilResource(r pulumi.Resource) bool {
	v := reflect.ValueOf(r)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// child returns options that parent a resource to its component and keep the provider.
func child(parent pulumi.Resource, opts []pulumi.ResourceOption, more ...pulumi.ResourceOption) []pulumi.ResourceOption {
	out := append([]pulumi.ResourceOption{pulumi.Parent(parent)}, opts...)
	return append(out, more...)
}

// optional is o, or an option that does nothing when o is nil (a part switched off).
func optional(o pulumi.ResourceOption) pulumi.ResourceOption {
	if o == nil {
		return pulumi.Composite()
	}
	return o
}
