// L-shaped domain [-1,1]^2 minus the quadrant (0,1)x(-1,0) (area 3), refined towards the re-entrant corner.
Point(1) = {-1, -1, 0, 0.1}; Point(2) = {0, -1, 0, 0.1}; Point(3) = {0, 0, 0, 0.02};
Point(4) = {1, 0, 0, 0.1}; Point(5) = {1, 1, 0, 0.1}; Point(6) = {-1, 1, 0, 0.1};
Line(1) = {1, 2}; Line(2) = {2, 3}; Line(3) = {3, 4}; Line(4) = {4, 5}; Line(5) = {5, 6}; Line(6) = {6, 1};
Curve Loop(1) = {1, 2, 3, 4, 5, 6};
Plane Surface(1) = {1};
Physical Curve("corner", 1) = {2, 3};
Physical Curve("outer", 2) = {1, 4, 5, 6};
Physical Surface("domain", 3) = {1};
