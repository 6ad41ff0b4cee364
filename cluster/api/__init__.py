"""The HTTP description of a node: how its modules and routes describe themselves, read by
the modules (which declare their forms and routes) and the dashboard (which mounts them and
writes ``/openapi.json``). Data and thin handlers only; it serves nothing.

    HttpModule, routes_of      a module's HTTP half: create form, conventional and action
                               routes (a plain ``cluster.runtime.Module`` gets ``GET pools``)
    ModuleRoute, RouteCall     a module route, and one request to it
    FormField, FormSpec        create forms as data (``pool_name_field``, ``pool_id_field``)
    ApiSpec, ApiParam, Link    how a route describes itself (``apidoc``: the vocabulary)
    answers                    the JSON Schemas of the runtime's answers
    unknown_node               the message of a node id that names no node, in HTTP terms

The runtime never imports this room; it imports the ground and the runtime's public surface.
"""

from . import answers, apidoc
from .apidoc import ApiParam, ApiSpec, Link
from .forms import FormField, FormSpec, pool_id_field, pool_name_field
from .module import HttpModule, routes_of
from .routes import Handler, ModuleRoute, RouteCall, answering_pool_gone, unknown_node

__all__ = [
    "ApiParam",
    "ApiSpec",
    "FormField",
    "FormSpec",
    "Handler",
    "HttpModule",
    "Link",
    "ModuleRoute",
    "RouteCall",
    "answering_pool_gone",
    "answers",
    "apidoc",
    "pool_id_field",
    "pool_name_field",
    "routes_of",
    "unknown_node",
]
