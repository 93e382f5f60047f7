# The lab's k3d cluster, as the Pulumi program runs it on the user's machine (bash, from the
# command provider): `preflight` checks without changing anything (it runs on every preview
# and up), `ensure` creates the cluster or adopts the one this stack made, `delete` removes it
# only if it is the very cluster this resource created.
#
# Input, from the environment: IGWLAB_CLUSTER (name), IGWLAB_K3S_IMAGE, IGWLAB_HOST_PORT,
# IGWLAB_API_PORT, IGWLAB_OWNER (the Pulumi project/stack that owns the cluster), and for
# delete PULUMI_COMMAND_STDOUT (what ensure printed: the cluster's instance id).
#
# Ownership and the values a cluster was made with are docker labels on its server node
# (k3d --runtime-label): k3d cannot change a cluster's image or ports, so a changed value is
# refused with what to do instead of replacing (and so deleting) the cluster.
set -euo pipefail

K3D_MIN=5.8.0
name=${IGWLAB_CLUSTER:?}
image=${IGWLAB_K3S_IMAGE:?}
host_port=${IGWLAB_HOST_PORT:?}
api_port=${IGWLAB_API_PORT:?}
owner=${IGWLAB_OWNER:?}
stack=${owner##*/}

fail() {
	printf 'igwlab: %s\n' "$*" >&2
	exit 1
}

# version_at_least A B: A >= B for dotted versions (a leading v is ignored).
version_at_least() {
	local IFS=.
	local -a a b
	read -r -a a <<<"${1#v}"
	read -r -a b <<<"${2#v}"
	local i
	for i in 0 1 2; do
		local x=${a[i]:-0} y=${b[i]:-0}
		x=${x%%[!0-9]*} y=${y%%[!0-9]*}
		((10#${x:-0} > 10#${y:-0})) && return 0
		((10#${x:-0} < 10#${y:-0})) && return 1
	done
	return 0
}

check_tools() {
	command -v docker >/dev/null 2>&1 ||
		fail "docker not found on PATH: install Docker (Docker Engine or Docker Desktop) and start it"
	local out
	if ! out=$(docker info --format '{{.ServerVersion}}' 2>&1); then
		fail "Docker is not running (docker info: ${out//$'\n'/ }): start Docker, then run pulumi up again"
	fi
	command -v k3d >/dev/null 2>&1 ||
		fail "k3d not found on PATH: install k3d $K3D_MIN or later (https://k3d.io/#installation)"
	local v
	v=$(k3d version 2>/dev/null | sed -n 's/^k3d version \(v[0-9][0-9.]*\).*/\1/p' | head -n 1)
	[[ -n $v ]] || fail "could not read k3d's version from 'k3d version': k3d $K3D_MIN or later is needed"
	version_at_least "$v" "$K3D_MIN" ||
		fail "k3d $v is too old: k3d $K3D_MIN or later is needed (https://k3d.io/#installation)"
}

# label NAME: a label of this cluster's server node ("" if absent).
server_labels() {
	docker ps -a --filter "label=k3d.cluster=$name" --filter label=k3d.role=server \
		--format '{{.Label "igwlab.owner"}}|{{.Label "igwlab.instance"}}|{{.Label "igwlab.k3s-image"}}|{{.Label "igwlab.host-port"}}|{{.Label "igwlab.api-port"}}' |
		head -n 1
}

# port_user PORT: what holds a host port: a container that publishes it, or any listener on
# 127.0.0.1 (bash's /dev/tcp connects; nothing is sent).
port_user() {
	local port=$1 c
	c=$(docker ps --format '{{.Names}} {{.Ports}}' | grep -E ":$port->" | head -n 1 | cut -d' ' -f1 || true)
	if [[ -n $c ]]; then
		echo "container $c"
		return
	fi
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		echo "a process listening on 127.0.0.1:$port"
	fi
}

# changed KEY OLD NEW: refuse to change a value a running cluster was made with.
changed() {
	fail "igwlab:$1 changed from $2 to $3, but the k3d cluster $name was created with $2 and k3d cannot change it; replacing the cluster would delete it and everything in it. Either set it back (pulumi config set igwlab:$1 $2 -s $stack) or recreate the lab with the new value (pulumi destroy -s $stack, then pulumi up -s $stack)"
}

# check: everything preflight and ensure verify. Prints "adopt <instance>" for this stack's
# own cluster with matching values, "create" when there is none.
check() {
	check_tools
	local other
	other=$(docker ps -a --filter "label=igwlab.owner=$owner" --filter label=k3d.role=server --format '{{.Label "k3d.cluster"}}' |
		grep -vx -- "$name" | head -n 1 || true)
	if [[ -n $other ]]; then
		fail "igwlab:clusterName changed from $other to $name, but this stack ($owner) runs the k3d cluster $other; renaming would delete it. Either set it back (pulumi config set igwlab:clusterName $other -s $stack) or recreate the lab with the new name (pulumi destroy -s $stack, then pulumi up -s $stack)"
	fi
	local labels
	labels=$(server_labels)
	if [[ -z $labels ]]; then
		local p user
		for p in "$api_port:apiPort" "$host_port:hostPort"; do
			user=$(port_user "${p%%:*}")
			[[ -z $user ]] ||
				fail "port ${p%%:*} (igwlab:${p#*:}) is in use by $user: free it (another k3d cluster: k3d cluster stop <name>) or pick a free port (pulumi config set igwlab:${p#*:} <port> -s $stack)"
		done
		echo create
		return
	fi
	local l_owner l_instance l_image l_host l_api
	IFS='|' read -r l_owner l_instance l_image l_host l_api <<<"$labels"
	if [[ $l_owner != "$owner" ]]; then
		local by="was not created by this stack ($owner)"
		[[ -z $l_owner ]] || by="belongs to another stack ($l_owner)"
		fail "a k3d cluster named $name already exists and $by; adopting it would install the lab over whatever runs in it. Either delete it (k3d cluster delete $name) or give the lab another name (pulumi config set igwlab:clusterName <name> -s $stack)"
	fi
	[[ $l_image == "$image" ]] || changed k3sImage "$l_image" "$image"
	[[ $l_host == "$host_port" ]] || changed hostPort "$l_host" "$host_port"
	[[ $l_api == "$api_port" ]] || changed apiPort "$l_api" "$api_port"
	echo "adopt $l_instance"
}

ensure() {
	local verdict
	verdict=$(check)
	if [[ $verdict == adopt* ]]; then
		echo "k3d cluster $name exists and belongs to this stack: using it" >&2
		echo "${verdict#adopt }"
		return
	fi
	local instance
	instance="$(date +%Y%m%d%H%M%S)-$$-$RANDOM"
	local labels=() l
	for l in "igwlab.owner=$owner" "igwlab.instance=$instance" "igwlab.k3s-image=$image" \
		"igwlab.host-port=$host_port" "igwlab.api-port=$api_port"; do
		labels+=(--runtime-label "$l@server:*")
	done
	# k3d's own output is progress: stdout is kept for the instance id alone.
	k3d cluster create "$name" --image "$image" --servers 1 --agents 2 \
		--api-port "127.0.0.1:$api_port" -p "127.0.0.1:$host_port:80@loadbalancer" \
		--k3s-arg '--disable=traefik@server:*' "${labels[@]}" \
		--kubeconfig-update-default=false --kubeconfig-switch-context=false \
		--wait --timeout 300s >&2
	echo "$instance"
}

delete() {
	local want=${PULUMI_COMMAND_STDOUT:-}
	command -v k3d >/dev/null 2>&1 || fail "k3d not found on PATH: it is needed to delete the k3d cluster $name"
	local labels
	labels=$(server_labels)
	if [[ -z $labels ]]; then
		echo "k3d cluster $name is already gone" >&2
		return
	fi
	local l_owner l_instance
	IFS='|' read -r l_owner l_instance _ <<<"$labels"
	if [[ -z $want || $l_owner != "$owner" || $l_instance != "$want" ]]; then
		echo "not deleting k3d cluster $name: it is not the cluster this stack created (owner '${l_owner}', instance '${l_instance}', expected '$owner', '$want')" >&2
		return
	fi
	k3d cluster delete "$name" >&2
}

case ${1:-} in
preflight)
	check >/dev/null
	echo "k3d cluster $name: preflight passed" >&2
	;;
ensure) ensure ;;
delete) delete ;;
*) fail "usage: $0 preflight|ensure|delete" ;;
esac
