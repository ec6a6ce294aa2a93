// Cylinder of radius 0.5 and height 1 along z (volume pi/4) with a cylindrical hole of radius 0.2.
SetFactory("OpenCASCADE");
Cylinder(1) = {0, 0, 0, 0, 0, 1, 0.5};
Cylinder(2) = {0, 0, 0, 0, 0, 1, 0.2};
BooleanDifference(3) = { Volume{1}; Delete; }{ Volume{2}; Delete; };
Mesh.MeshSizeMax = 0.12;
// surfaces of the difference: find them by position
inner() = Surface In BoundingBox{-0.21, -0.21, -0.01, 0.21, 0.21, 1.01};
bottom() = Surface In BoundingBox{-0.51, -0.51, -0.01, 0.51, 0.51, 0.01};
top() = Surface In BoundingBox{-0.51, -0.51, 0.99, 0.51, 0.51, 1.01};
outer() = Abs(Boundary{ Volume{3}; });
outer() -= {inner(), bottom(), top()};
Physical Surface("bottom", 1) = {bottom()};
Physical Surface("top", 2) = {top()};
Physical Surface("outer", 3) = {outer()};
Physical Surface("hole", 4) = {inner()};
Physical Volume("domain", 5) = {3};
