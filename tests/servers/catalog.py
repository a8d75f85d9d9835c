"""A small shop catalog MCP server with output schemas: a listing with no paging of
its own (simroute's `paginate` adds it) and a price lookup (`mislead` tests).

Run: python tests/servers/catalog.py  (stdio)
"""

from fastmcp import FastMCP
from pydantic import BaseModel

mcp = FastMCP("catalog")

PRODUCTS = {
    "lamps": [
        ("desk lamp", 30.0),
        ("floor lamp", 85.0),
        ("reading lamp", 42.5),
        ("wall lamp", 55.0),
        ("night lamp", 19.9),
    ],
}


class Product(BaseModel):
    name: str
    price: float


class Listing(BaseModel):
    products: list[Product]
    next_cursor: str | None = None


class Price(BaseModel):
    product: str
    price: float
    currency: str


@mcp.tool
def list_products(category: str, cursor: str | None = None) -> Listing:
    """The products of a category."""
    return Listing(products=[Product(name=name, price=price) for name, price in PRODUCTS.get(category, [])])


@mcp.tool
def get_price(product: str) -> Price:
    """The price of a product."""
    prices = {name: price for listing in PRODUCTS.values() for name, price in listing}
    return Price(product=product, price=prices.get(product, 0.0), currency="EUR")


if __name__ == "__main__":
    mcp.run()
