"""The data model every room speaks: a `Call` in, an `Observation` out, the `Decision`
that routed it, the `Session` it belongs to, the protocols of the sides the engine
is handed (a simulator, a fork backend, a front door's real side), and a call's
canonical keys (`keys.py`: the replay key, the tool key).

The bottom floor of the house: it imports nothing of simroute, and every other
package (`router`, `backends`, `policies`, `shadow`, `records`, `simroute`) may
import it.
Import names from here (`from calls import Call`); the modules below hold one
concept each.
"""

from calls.call import Call as Call
from calls.call import Decision as Decision
from calls.call import Observation as Observation
from calls.call import ReplayAlias as ReplayAlias
from calls.keys import call_key as call_key
from calls.keys import canonical_json as canonical_json
from calls.keys import drop_paths as drop_paths
from calls.keys import snapshot_digest as snapshot_digest
from calls.keys import tool_key as tool_key
from calls.perturbation import ANSWER_KINDS as ANSWER_KINDS
from calls.perturbation import FAULT_KINDS as FAULT_KINDS
from calls.perturbation import Perturbation as Perturbation
from calls.perturbation import Steer as Steer
from calls.ports import CallNext as CallNext
from calls.ports import ForkRefused as ForkRefused
from calls.ports import Forks as Forks
from calls.ports import Simulator as Simulator
from calls.ports import SimulatorUnavailable as SimulatorUnavailable
from calls.routes import Mode as Mode
from calls.routes import Provenance as Provenance
from calls.routes import Route as Route
from calls.session import HISTORY_IN_MEMORY as HISTORY_IN_MEMORY
from calls.session import EpisodeSetup as EpisodeSetup
from calls.session import RoutingPolicy as RoutingPolicy
from calls.session import Session as Session
from calls.session import Turn as Turn
from calls.session import WorldDocuments as WorldDocuments
from calls.slices import CountingSlice as CountingSlice
from calls.slices import SessionSlice as SessionSlice
from calls.source import Source as Source
