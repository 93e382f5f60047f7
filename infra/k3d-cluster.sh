# The lab's k3d cluster, as the Pulumi program runs it on the user's machine (bash, from the
# command provider): `preflight` checks without changing anything (it runs on every preview
# and up), `ensure` creates the cluster or adopts the one this stack made, `delete` removes it
# only if it is the very cluster this resource created.
#
# Input, from the environment: IGWLAB_CLUSTER (name), IGWLAB_K3S_IMAGE, IGWLAB_HOST_PORT,
# IGWLAB_API_PORT, IGWLAB_OWNER (the Pulumi project/stack that owns the cluster), and for
# delete PULUMI_COMMAND_STDOUT (what ensure printed: the cluster's instance id). The preflight
# also gets what the lab asks of the machine, as the program computes it (infra/requests.go,
# K3dNeeds): IGWLAB_NEED_NODE_CPUS (the CPUs each of k3d's nodes must report for every pod to
# be scheduled), IGWLAB_REQUEST_MILLICPU and IGWLAB_REQUEST_MEMORY (bytes) in all, and
# IGWLAB_BUILD_IMAGES=1 when the program builds the lab's image (which needs BuildKit).
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

# check_machine: the Docker VM's CPUs and memory against what the lab requests, and BuildKit
# when the lab's image is built. k3d's nodes are containers of the one VM and each reports all
# of its CPUs and memory as its own: the scheduler sees three times the VM, so the pods fit on
# paper when a node reports IGWLAB_NEED_NODE_CPUS, while the cores they run on are the VM's.
check_machine() {
	local need_cpus=${IGWLAB_NEED_NODE_CPUS:-} req_milli=${IGWLAB_REQUEST_MILLICPU:-} req_mem=${IGWLAB_REQUEST_MEMORY:-}
	if [[ -n $need_cpus ]]; then
		local info ncpu mem
		info=$(docker info --format '{{.NCPU}} {{.MemTotal}}' 2>&1) || fail "docker info: ${info//$'\n'/ }"
		read -r ncpu mem <<<"$info"
		[[ $ncpu =~ ^[0-9]+$ && $mem =~ ^[0-9]+$ ]] || fail "docker info gave '$info', not CPUs and memory"
		((ncpu >= need_cpus)) ||
			fail "the lab requests $(milli "$req_milli") CPUs and the Docker VM has $ncpu, which each of k3d's 3 nodes reports as its own: some pods would stay Pending until the install times out (600 s). Give the Docker VM at least $need_cpus CPUs (Docker Desktop: Settings > Resources; colima start --cpu $need_cpus), or run a smaller lab (pulumi config set igwlab:profile small -s $stack); igwlab doctor says which fits"
		((mem >= req_mem)) ||
			fail "the lab requests $(gib "$req_mem") of memory and the Docker VM has $(gib "$mem"), shared by all 3 nodes: pods would stay Pending or be killed. Give the Docker VM at least $(gib $((req_mem + (1 << 30)))) (Docker Desktop: Settings > Resources; colima start --memory N), or run a smaller lab (pulumi config set igwlab:profile small -s $stack)"
		if ((ncpu * 1000 < req_milli)); then
			echo "igwlab: warning: the lab requests $(milli "$req_milli") CPUs on a Docker VM of $ncpu: the pods are scheduled (each node reports all $ncpu), but share $ncpu real cores, so scenarios that load every gateway pod at once are bound by the machine, not the gateway (their results say so). $(((req_milli + 999) / 1000)) CPUs run the lab without sharing" >&2
		fi
	fi
	if [[ ${IGWLAB_BUILD_IMAGES:-} == 1 ]] && ! docker buildx version >/dev/null 2>&1; then
		local server
		server=$(docker info --format '{{.ServerVersion}}' 2>/dev/null || true)
		# Docker 23 and later build with BuildKit through the buildx plugin; before that the
		# daemon has BuildKit built in, which DOCKER_BUILDKIT=1 (set by the build) turns on.
		version_at_least "${server:-0}" 23.0.0 &&
			fail "Docker $server builds the lab's image with BuildKit through the buildx plugin, and 'docker buildx version' fails: install it (Docker's docker-buildx-plugin package, Debian's docker-buildx) or set igwlab:h2dialImage to an image built elsewhere"
	fi
	return 0
}

milli() { printf '%d.%d' $(($1 / 1000)) $((($1 % 1000) / 100)); }
gib() { printf '%d.%d GiB' $(($1 >> 30)) $(((($1 % (1 << 30)) * 10) >> 30)); }

# label NAME: a label of this cluster's server node ("" if absent).
server_labels() {
	docker ps -a --filter "label=k3d.cluster=$name" --filter label=k3d.role=server \
		--format '{{.Label "igwlab.owner"}}|{{.Label "igwlab.instance"}}|{{.Label "igwlab.k3s-image"}}|{{.Label "igwlab.host-port"}}|{{.Label "igwlab.api-port"}}|{{.State}}' |
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
# own running cluster with matching values, "start <instance>" for it stopped (docker ps -a
# lists a stopped cluster too, whose API port refuses every connection until k3d starts it),
# "create" when there is none.
check() {
	check_tools
	check_machine
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
	local l_owner l_instance l_image l_host l_api l_state
	IFS='|' read -r l_owner l_instance l_image l_host l_api l_state <<<"$labels"
	if [[ $l_owner != "$owner" ]]; then
		local by="was not created by this stack ($owner)"
		[[ -z $l_owner ]] || by="belongs to another stack ($l_owner)"
		fail "a k3d cluster named $name already exists and $by; adopting it would install the lab over whatever runs in it. Either delete it (k3d cluster delete $name) or give the lab another name (pulumi config set igwlab:clusterName <name> -s $stack)"
	fi
	[[ $l_image == "$image" ]] || changed k3sImage "$l_image" "$image"
	[[ $l_host == "$host_port" ]] || changed hostPort "$l_host" "$host_port"
	[[ $l_api == "$api_port" ]] || changed apiPort "$l_api" "$api_port"
	if [[ $l_state != running ]]; then
		echo "start $l_instance"
		return
	fi
	echo "adopt $l_instance"
}

ensure() {
	local verdict
	verdict=$(check)
	case $verdict in
	adopt*)
		echo "k3d cluster $name exists and belongs to this stack: using it" >&2
		echo "${verdict#adopt }"
		return
		;;
	start*)
		echo "k3d cluster $name belongs to this stack and is stopped: starting it" >&2
		k3d cluster start "$name" --wait --timeout 300s >&2
		echo "${verdict#start }"
		return
		;;
	esac
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
	verdict=$(check)
	[[ $verdict != start* ]] || echo "k3d cluster $name is stopped: this update starts it (k3d cluster start $name)" >&2
	echo "k3d cluster $name: preflight passed" >&2
	;;
ensure) ensure ;;
delete) delete ;;
*) fail "usage: $0 preflight|ensure|delete" ;;
esac
